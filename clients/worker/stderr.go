package worker

import (
	"bufio"
	"bytes"
	"io"
	"os"
)

// logStderr copies a worker's stderr into its stderr.log, with the run's Redis password replaced: the log
// is served and kept with the run, and a library may print its connection settings (issue 22, item 3).
// The copy is this goroutine's, not exec's, so that nothing waits for the end of a pipe a descendant that
// escaped may hold open.
func logStderr(r *os.File, log *os.File, secret string) {
	defer r.Close()
	defer log.Close()
	if secret == "" {
		_, _ = io.Copy(log, r)
		return
	}
	br := bufio.NewReaderSize(r, 64<<10)
	old, repl := []byte(secret), []byte("REDACTED")
	var carry []byte // the end of an over-long line that may hold the start of the secret
	for {
		chunk, err := br.ReadSlice('\n')
		if len(chunk) > 0 {
			buf := append(carry, chunk...)
			carry = nil
			keep := len(buf)
			if err == bufio.ErrBufferFull && len(old) > 1 { // no newline yet: hold back what could start the secret
				keep = max(0, len(buf)-(len(old)-1))
			}
			_, _ = log.Write(bytes.ReplaceAll(buf[:keep], old, repl))
			carry = append([]byte(nil), buf[keep:]...)
		}
		if err != nil && err != bufio.ErrBufferFull {
			if len(carry) > 0 {
				_, _ = log.Write(bytes.ReplaceAll(carry, old, repl))
			}
			return
		}
	}
}
