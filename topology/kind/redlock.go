package kind

// Redlock is N independent masters (--nodes, 5 by default), each client connected to each.
var Redlock = Kind{Name: "redlock", Masters: true, DefaultMasters: 5, Direct: true}
