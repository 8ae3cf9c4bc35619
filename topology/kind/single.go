package kind

// Single is one master.
var Single = Kind{Name: "single", Nodes: 1, Direct: true}
