package nemesis

import (
	"context"
	"testing"
	"time"
)

// plainClient pauses and skews nothing: a client with no write path to delay.
type plainClient struct{}

func (plainClient) Arm()                         {}
func (plainClient) Pause()                       {}
func (plainClient) Resume()                      {}
func (plainClient) SetClockOffset(time.Duration) {}

type delayClient struct {
	plainClient
	delay time.Duration
}

func (c *delayClient) SetWriteDelay(d time.Duration) { c.delay = d }

// resource-delay sets the client's write delay to the fault's duration and clears it at the heal; a client
// that cannot delay its writes is an error, not a fault that silently did nothing.
func TestResourceDelaySetsAndClears(t *testing.T) {
	c := &delayClient{}
	env := &Env{Clients: []string{"c1"}, Params: Params{Duration: 3 * time.Second}, Client: func(string) Client { return c }}
	f := Lookup("resource-delay")
	_, heal, err := f.Start(context.Background(), env, ts("c1"))
	if err != nil || c.delay != 3*time.Second {
		t.Fatalf("after start: delay %v, %v", c.delay, err)
	}
	if err := heal(context.Background()); err != nil || c.delay != 0 {
		t.Fatalf("after stop: delay %v, %v", c.delay, err)
	}
	env.Client = func(string) Client { return plainClient{} }
	if _, _, err := f.Start(context.Background(), env, ts("c1")); err == nil {
		t.Fatal("a client that cannot delay its writes was accepted")
	}
}
