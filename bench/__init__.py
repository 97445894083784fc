"""irlens benchmarks: `python -m bench` (add `--quick` while developing). See bench/NOTES.md."""
