// Package model is the plain data every layer of the report shares: the
// Dataset a source returns — the ledger per holding, the GPUs it saw, the
// allocations, activity and framebuffer samples, the inputs of coverage and
// the pods' team labels — and the units of the report's figures
// (device-seconds and device-hours, EUR, the month of HoursPerMonth hours)
// with their formatting.
//
// It does no I/O and imports no other report package; every other report
// package (source, analysis, advice, render and report itself) may import it.
package model
