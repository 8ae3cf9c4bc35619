package wire

// RecordConn is a connection of s from client to node, fed by hand. The tests that map real scripts are
// external (package wire_test): the libraries' tables register from above (locks, clients/worker), which
// import this package.
func RecordConn(s *Session, client, node string) *Conn {
	return NewConn(&connRecorder{s: s, client: client, node: node}, s.now)
}

// Cmd is cmd, for the external tests.
var Cmd = cmd
