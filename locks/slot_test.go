package locks

import "testing"

// Known slots (from CLUSTER KEYSLOT): a hash tag's content decides the slot.
func TestSlot(t *testing.T) {
	for key, want := range map[string]int{"foo": 12182, "{foo}:bar": 12182, "lock-0": Slot("{lock-0}"), "": 0, "{}x": Slot("{}x")} {
		if got := Slot(key); got != want {
			t.Errorf("Slot(%q) = %d, want %d", key, got, want)
		}
	}
}
