"""Helion: the Triton code Helion generates from a kernel, with the `# src[file:line]` comments that tie
each generated statement to the Helion line it came from (`generated.py`: the comments, the kernels,
and the code blocks `HELION_PRINT_OUTPUT_CODE=1` prints into a program's output).

May import `parsers/records.py` and `parsers/literal_scan.py`; never `app/`.
"""
