// Package engine is the report's client of the engines that hold its data:
// everything that talks to a Prometheus-compatible API or to Prometheus' own
// PromQL engine, behind one seam, the Querier. HTTPQuerier sends range
// queries to Prometheus, Thanos, Mimir and Cortex, VictoriaMetrics and
// managed services (a path prefix, an HTTP client config file, retries, a
// per-request timeout, an answer size cap) and decodes their answers as a
// stream (answer.go, jsonstream.go); EmbeddedQuerier evaluates PromQL over an
// in-memory Store (embedded.go, memiter.go), loaded from OpenMetrics or, for
// report --demo, filled straight from a simulation's scrapes (demostore.go).
// A Runner plans a query's requests within points, samples and UTC days,
// sends them a few at once, folds their answers in time order and checks
// every answer (check.go); ProbeWindows asks how the engine bounds a range
// selector, InclusiveEnd lets a range's end hold its last sample.
//
// It knows no GPU, no ledger series and no dcgm-exporter name: what a query
// asks for is its callers' business (TestEngineKnowsNoMetric holds it). Of
// the report's packages it imports none; report/source and the sources
// below it import it.
package engine
