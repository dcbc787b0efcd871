"""
The sections of the report page (:func:`~benchmarks.harness.report.page.render_page`), one module per
section, in the order of the page:

- :mod:`.header`: title, the command that regenerates the page, and the first-look banners;
- :mod:`.headline`: the aggregates of every contender and P(X > Y) between the headline's contenders;
- :mod:`.goal_check`: the protocol's goals, over all entries or suite by suite;
- :mod:`.ablations`: the ablations of the target;
- :mod:`.cost`: the wall-clock and CPU-time ratios;
- :mod:`.per_environment`: returns, AUCs, normalisation constants and ESS per environment;
- :mod:`.figures`: the PNGs;
- :mod:`.runs`: completeness, failed and left-out runs, code and library versions.

Each section function returns its Markdown ("" when the section has nothing to show).
"""
