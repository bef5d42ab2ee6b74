"""ROD: resilient operator distribution (Xing et al. 2006), and the resilience of any plan.

- `model`: the load-model facet as arrays (L^o, C, R, B) and the weight matrix W (§3.3);
- `algorithm`: ROD (Fig. 10) with the lower-bound extension (§6.1);
- `querygraph`: coefficients from a query graph, the §6.2 linearisation, the §7.1 generator;
- `clustering`: operator clustering (§6.3) and loads with communication cost;
- `baselines`: LLF, Connected-LB, Random, Max-Rate-LB (§7.2, §7.3.5) and exhaustive Optimal;
- `measures`: F/F* (exact, or randomized QMC with an interval), r/r*, the MMAD bound;
- `resilience`: those measures and the rate headroom of any plan (`plan_resilience`);
- `strategy`: `rod`, `llf`, `connected_lb` as reconf strategies under the migration budget;
- `fit`: the coefficients fitted by NNLS from per-period unit loads and stream rates.
"""
