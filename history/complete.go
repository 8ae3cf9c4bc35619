package history

// Complete records the operation's completion of type t: Ok with value and args, Fail with value and err,
// anything else as Unknown with err (an unknown outcome has no value). It is how a classified outcome
// (package history/outcome, the wire recorder's reply shapes) is written, so that no caller repeats the
// switch.
func (o *Op) Complete(t Type, value *int64, args map[string]int64, err error) {
	switch t {
	case Ok:
		o.Ok(value, args)
	case Fail:
		o.Fail(value, err)
	default:
		o.Unknown(err)
	}
}
