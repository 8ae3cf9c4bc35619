// Package lockcheck carries the shipped workers' sources, with this module's go.mod and go.sum, inside the
// lockcheck binary, so that a binary installed or copied alone (go install, a release archive, a copy in an
// empty directory) builds and runs every one of them: clients/worker.Folder writes them out under the cache
// on first use, as the tree they came from (workers/<folder>/, and the Go SDK the reference worker needs).
//
// The Go library workers' files carry "//go:build ignore", so that this module neither builds them nor
// lists their libraries in its go.mod (go mod tidy skips that tag): their build.sh drops the line and builds
// them in a module of their own. A folder with a go.mod of its own could not be embedded.
package lockcheck

import "embed"

// Sources holds go.mod, go.sum and the workers' sources, named by kind so that what a build leaves in a
// source folder (node_modules, target, a venv) is never carried along.
//
//go:embed go.mod go.sum workers/*/*.sh workers/*/*.go workers/*/*.py workers/*/*.js workers/*/DEFAULT_VERSION
//go:embed workers/*/README.md workers/redisson/pom.xml workers/redisson/src workers/node-redlock/test
var Sources embed.FS

// Schedules holds the shipped schedules (examples/schedules), which catalog entries of lockcheck repro
// play: a binary installed alone writes them out under its cache to pass them to its runs.
//
//go:embed examples/schedules/*.yaml
var Schedules embed.FS

// Catalog holds lockcheck repro's catalog (repro/catalog): the repro package plays its entries, and the
// known package matches an invalid run against them, so both read the one copy.
//
//go:embed repro/catalog/*.yaml
var Catalog embed.FS
