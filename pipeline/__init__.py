"""Rebuild the tables of five NMT papers as Snakemake/DVC targets."""
