"""Synthetic detokenised sentences and noisy copies of them: references and systems for the metric tests."""
import random

WORDS = ("the cat dog house river Paris train man woman red old new saw found took near under behind quickly "
         "yesterday and but EU Commission report, said that it would be ready soon").split()


def corpus(seed: int, n: int = 80) -> list[str]:
    """Detokenised sentences of 3-25 words with capitals, commas and final full stops."""
    rng = random.Random(seed)
    lines = []
    for _ in range(n):
        words = [rng.choice(WORDS) for _ in range(rng.randint(3, 25))]
        words[0] = words[0].capitalize()
        lines.append(" ".join(words) + rng.choice([".", "?", "!", "."]))
    return lines


def noisy(lines: list[str], seed: int, rate: float) -> list[str]:
    """Each word dropped, replaced or case-flipped with probability `rate` (a system or a paraphrase)."""
    rng = random.Random(seed)
    out = []
    for line in lines:
        words = []
        for word in line.split():
            r = rng.random()
            if r < rate / 3:
                continue
            if r < 2 * rate / 3:
                word = rng.choice(WORDS)
            elif r < rate:
                word = word.swapcase()
            words.append(word)
        out.append(" ".join(words))
    return out
