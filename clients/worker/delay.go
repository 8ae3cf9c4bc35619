package worker

import "time"

// SetWriteDelay delays the worker client's writes to the harness's resource (the resource-delay fault):
// the workload makes them, in lockcheck, so the worker itself is not told.
func (c *Client) SetWriteDelay(d time.Duration) { c.cfg.Gate.SetWriteDelay(d) }
