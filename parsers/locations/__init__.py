"""One module per location syntax (MLIR, LLVM IR, PTX/AMDGCN, SASS); :mod:`parsers.loc` is the entry."""
