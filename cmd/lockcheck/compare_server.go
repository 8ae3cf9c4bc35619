package main

import "fmt"

// withServer is --servers with --server, the one server every row runs on as run and suite take it; both
// at once is refused rather than merged (a row per server is --servers' meaning alone).
func withServer(server string, servers []string) ([]string, error) {
	switch {
	case server == "":
		return servers, nil
	case len(servers) > 0:
		return nil, fmt.Errorf("compare: --server %s and --servers %v: give one (--servers for a row per server)", server, servers)
	}
	return []string{server}, nil
}
