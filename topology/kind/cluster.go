package kind

// Cluster is Redis Cluster: three shards of a primary and a replica (topology/cluster.go).
var Cluster = Kind{Name: "cluster", Nodes: 6, Slots: true, FailsOver: true}
