package nemesis

func init() {
	// A partition right after a grant cuts the holder itself (the reference's S7: the holder is cut off
	// from Redis while it holds), rather than whichever clients the seed drew.
	RegisterTriggered("partition", "grant", callerLinks)
}
