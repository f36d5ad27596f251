package audit

import (
	"bufio"
	"bytes"
	"io"
)

// readBufSize is the buffer of each input (and of its gzip stream).
const readBufSize = 64 << 10

// lineReader splits an input into lines. A line up to max bytes is
// returned (without its newline); a longer one is discarded up to its
// newline a buffer at a time, so memory stays bounded by max whatever the
// input holds.
type lineReader struct {
	br   *bufio.Reader
	buf  []byte
	max  int
	line int64 // lines read so far
}

// next returns the next line. long > 0 means the line was longer than max
// and was discarded (long is its length). err is io.EOF after the last
// line, or the underlying reader's error; a partial last line before an
// error other than io.EOF is dropped (the error reports it).
func (lr *lineReader) next() (line []byte, long int64, err error) {
	if cap(lr.buf) > 1<<20 {
		lr.buf = nil // do not keep a big line's buffer
	}
	lr.buf = lr.buf[:0]
	var n int64
	over := false
	for {
		seg, err := lr.br.ReadSlice('\n')
		n += int64(len(seg))
		if !over {
			content := len(lr.buf) + len(seg)
			if err == nil {
				content--
			}
			switch {
			case content > lr.max:
				over = true
				lr.buf = lr.buf[:0]
			case err == nil && len(lr.buf) == 0:
				lr.line++
				return trimLine(seg), 0, nil
			default:
				if need := len(lr.buf) + len(seg); need > cap(lr.buf) {
					// Double (append grows large slices by 1.25x, which
					// allocates 5 times the final size in total).
					nb := make([]byte, len(lr.buf), max(need, min(2*cap(lr.buf), lr.max+1)))
					copy(nb, lr.buf)
					lr.buf = nb
				}
				lr.buf = append(lr.buf, seg...)
			}
		}
		switch err {
		case bufio.ErrBufferFull:
			continue
		case nil:
			lr.line++
			if over {
				return nil, n - 1, nil
			}
			return trimLine(lr.buf), 0, nil
		case io.EOF:
			if n == 0 {
				return nil, 0, io.EOF
			}
			lr.line++ // a last line without a newline
			if over {
				return nil, n, nil
			}
			return trimLine(lr.buf), 0, nil
		default:
			return nil, 0, err
		}
	}
}

func trimLine(b []byte) []byte {
	return bytes.TrimSpace(bytes.TrimPrefix(b, []byte("\xef\xbb\xbf")))
}
