package nemesis

func init() {
	// A partition right after a grant cuts the holder itself (the reference's S7: the holder is cut off
	// from Redis while it holds), rather than whichever clients the seed drew.
	RegisterTriggered("partition", "grant", callerLinks)
}

func init() {
	// resource-delay right after a grant delays that holder's writes: its first one lands after its lease,
	// whoever holds the lock then (a delay drawn on a random client mostly found it holding nothing).
	RegisterTriggered("resource-delay", "grant", func(ev Event, planned []string) []string {
		if ev.Client == "" {
			return planned
		}
		return []string{ev.Client}
	})
}
