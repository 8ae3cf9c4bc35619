package network

import (
	"sync"

	"github.com/Shopify/toxiproxy/v2/stream"
	"github.com/Shopify/toxiproxy/v2/toxics"
)

// HoldReplies lets commands reach the node and apply, and keeps their replies, in order, until the heal
// delivers them: as replies waiting in a paused client's kernel buffer do (the reference's S2). Unlike
// DropReplies nothing is lost, so a caller whose timeout outlasts the hold reads every reply late.
func (l *Link) HoldReplies() error {
	return l.apply("hold-replies", `{"name":"hold-down","type":"hold","stream":"downstream"}`)
}

// hold is the toxic behind HoldReplies. Its chunks live in the stub's state, not in Pipe, because toxiproxy
// interrupts and reruns Pipe whenever the chain changes; Cleanup, called when the toxic is removed and
// before toxiproxy forwards what is still queued behind it, writes them out in the order they came.
type hold struct{}

type held struct {
	mu     sync.Mutex
	chunks []*stream.StreamChunk
	closed bool // the node closed its side: passed on after the held replies
}

func (*hold) NewState() interface{} { return new(held) }

func (*hold) Pipe(stub *toxics.ToxicStub) {
	s := stub.State.(*held)
	for {
		select {
		case <-stub.Interrupt:
			return
		case c := <-stub.Input:
			s.mu.Lock()
			if c == nil {
				s.closed = true
				s.mu.Unlock()
				<-stub.Interrupt
				return
			}
			s.chunks = append(s.chunks, c)
			s.mu.Unlock()
		}
	}
}

func (*hold) Cleanup(stub *toxics.ToxicStub) {
	s := stub.State.(*held)
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.chunks {
		if stub.WriteOutput(c, 0) != nil {
			break
		}
	}
	s.chunks = nil
	if s.closed {
		stub.Close()
	}
}

func init() { toxics.Register("hold", new(hold)) }
