"""HBCT, backward-compatible model upgrades, as a feature package: the objective (``objective``), its training
stage ``hyte train compatible`` (``training``, registered in ``hyte.runner``), the compatibility matrix and its
gains (``evaluation``), and its BENCHMARKS.md sections (``report``). The lineage it records lives in
``hyte.lineage``, below every index, so any index can refuse an undeclared query model."""
