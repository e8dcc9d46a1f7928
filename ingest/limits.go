package ingest

// MaxPointsPerQuery is the most points per series a Prometheus-compatible
// store returns for one range query: Prometheus refuses more than 11,000
// (VictoriaMetrics' -search.maxPointsPerTimeseries defaults to 30,000). A
// longer range is fetched in consecutive requests.
const MaxPointsPerQuery = 11_000
