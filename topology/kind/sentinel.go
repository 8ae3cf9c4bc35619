package kind

// Sentinel is a primary and two replicas, watched by three Sentinels that promote a replica.
var Sentinel = Kind{Name: "sentinel", Nodes: 3, Sentinels: 3, FailsOver: true}
