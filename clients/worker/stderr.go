package worker

import (
	"bufio"
	"io"
	"os"

	"github.com/lockcheck/lockcheck/internal/redact"
)

// logStderr copies a worker's stderr into its stderr.log, with the run's secrets replaced in every form
// (raw, URL-encoded, JSON-escaped): the log is served and kept with the run, and a library may print its
// connection settings or URL (issue 22, item 3; issue 29, item 3). The copy is this goroutine's, not
// exec's, so that nothing waits for the end of a pipe a descendant that escaped may hold open.
func logStderr(r *os.File, log *os.File, red *redact.Redactor) {
	defer r.Close()
	defer log.Close()
	span := red.Span()
	if span == 0 {
		_, _ = io.Copy(log, r)
		return
	}
	br := bufio.NewReaderSize(r, 64<<10)
	var carry []byte // the end of an over-long line that may hold the start of a secret
	for {
		chunk, err := br.ReadSlice('\n')
		if len(chunk) > 0 {
			buf := append(carry, chunk...)
			carry = nil
			keep := len(buf)
			if err == bufio.ErrBufferFull && span > 1 { // no newline yet: hold back what could start a secret
				keep = max(0, len(buf)-(span-1))
			}
			_, _ = log.Write(red.Bytes(buf[:keep]))
			carry = append([]byte(nil), buf[keep:]...)
		}
		if err != nil && err != bufio.ErrBufferFull {
			if len(carry) > 0 {
				_, _ = log.Write(red.Bytes(carry))
			}
			return
		}
	}
}
