// Package dockerfiles carries the Dockerfiles lockcheck builds itself, so the binary can build its Redis
// image anywhere a Docker engine runs.
package dockerfiles

import _ "embed"

// Offline is docker/redis-offline/Dockerfile: FROM scratch plus a rootfs/ taken from the host.
//
//go:embed redis-offline/Dockerfile
var Offline []byte
