// A Server-Sent Events load client on net/http, the peer strain's SSE load is measured against:
// -c streams, each a goroutine holding one GET with Accept: text/event-stream and reading it line
// by line, opening a new one when the server ends it, for -d. It prints one JSON line,
// {"events":N,"bytes":B,"streams":S}: the events dispatched in the measured time (blank lines
// ending a block that had a data line, as an EventSource dispatches them), the body bytes read,
// and the responses opened, reconnections included. Failed opens go to stderr. Standard library
// only.
package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

var bom = []byte{0xEF, 0xBB, 0xBF}

func main() {
	url := flag.String("url", "http://127.0.0.1:8080/events", "the event stream")
	conns := flag.Int("c", 100, "streams")
	dur := flag.Duration("d", 10*time.Second, "how long")
	flag.Parse()

	client := &http.Client{Transport: &http.Transport{
		// A reconnection reuses the connection its ended stream left idle.
		MaxIdleConnsPerHost: *conns,
		// Events must arrive as they are sent, not wait in a gzip window.
		DisableCompression: true,
	}}
	ctx, cancel := context.WithCancel(context.Background())
	var events, read, opened, failed atomic.Int64
	var wg sync.WaitGroup
	ready := make(chan struct{})
	for i := 0; i < *conns; i++ {
		resp, err := open(ctx, client, *url)
		if err != nil {
			log.Fatalf("open: %v", err)
		}
		opened.Add(1)
		wg.Add(1)
		go func(resp *http.Response) {
			defer wg.Done()
			r := bufio.NewReaderSize(nil, 16<<10)
			<-ready
			for {
				r.Reset(resp.Body)
				readEvents(r, &events, &read)
				resp.Body.Close()
				for {
					if ctx.Err() != nil {
						return
					}
					var err error
					if resp, err = open(ctx, client, *url); err == nil {
						opened.Add(1)
						break
					}
					if ctx.Err() == nil {
						failed.Add(1)
						time.Sleep(100 * time.Millisecond)
					}
				}
			}
		}(resp)
	}
	close(ready)
	time.Sleep(*dur)
	n, b, s := events.Load(), read.Load(), opened.Load()
	cancel()
	wg.Wait()
	fmt.Printf("{\"events\":%d,\"bytes\":%d,\"streams\":%d}\n", n, b, s)
	if f := failed.Load(); f > 0 {
		fmt.Fprintf(os.Stderr, "failed opens %d\n", f)
	}
}

// open starts one stream: an error unless the server answers 200 with an event stream (204 is
// the server saying there is nothing more to read).
func open(ctx context.Context, client *http.Client, url string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Cache-Control", "no-cache")
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || !strings.HasPrefix(ct, "text/event-stream") {
		resp.Body.Close()
		return nil, fmt.Errorf("%s: %s, %q", url, resp.Status, ct)
	}
	return resp, nil
}

// readEvents reads one response body to its end, adding each event and every byte as it comes,
// so the totals taken at the deadline are the ones read by then.
func readEvents(r *bufio.Reader, events, read *atomic.Int64) {
	var p lines
	first := true
	for {
		b, err := r.ReadSlice('\n')
		if len(b) > 0 {
			read.Add(int64(len(b)))
			if first {
				// A BOM has no line end in it, so the first slice holds all of it.
				b = bytes.TrimPrefix(b, bom)
				first = false
			}
			if n := p.feed(b); n > 0 {
				events.Add(int64(n))
			}
		}
		// A line longer than the buffer comes in several slices; anything else ends the stream.
		if err != nil && err != bufio.ErrBufferFull {
			return
		}
	}
}

// lines tells which lines dispatch events, however ReadSlice cuts them: a line ends in CRLF, LF
// or CR (so a slice ending in LF may hold several), and may be longer than the buffer.
type lines struct {
	head    [5]byte // the line's first bytes: enough to tell a data field from the rest
	n       int     // the line's length so far
	afterCR bool    // the last line ended in CR: a LF next belongs to that line end
	hasData bool    // the block has a data line, so a blank line dispatches it
}

// feed takes the next bytes of the body; the events they dispatched.
func (p *lines) feed(b []byte) int {
	events := 0
	for len(b) > 0 {
		if p.afterCR {
			p.afterCR = false
			if b[0] == '\n' {
				b = b[1:]
				continue
			}
		}
		i := bytes.IndexAny(b, "\r\n")
		if i < 0 {
			p.part(b)
			break
		}
		p.part(b[:i])
		if p.end() {
			events++
		}
		p.afterCR = b[i] == '\r'
		b = b[i+1:]
	}
	return events
}

func (p *lines) part(b []byte) {
	if p.n < len(p.head) {
		copy(p.head[p.n:], b)
	}
	p.n += len(b)
}

// end finishes the current line; true when it was a blank line that dispatched an event.
func (p *lines) end() bool {
	n := p.n
	head := string(p.head[:min(n, len(p.head))])
	p.n = 0
	switch {
	case n == 0:
		dispatched := p.hasData
		p.hasData = false
		return dispatched
	case n == 4 && head == "data", n >= 5 && head == "data:":
		p.hasData = true
	}
	return false
}
