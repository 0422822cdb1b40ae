// A server on Go's net/http with its default settings, for strain's roster of real servers
// (tests/integration/roster.rs): HTTP/1.1 and h2c (prior knowledge) on one plain port, and
// HTTP/1.1 and h2 by ALPN on a TLS port. It writes one access-log line per response,
// "STATUS METHOD PATH PROTO", before the response leaves, so the log is complete when strain
// has its answers.
//
//	go-http -listen 127.0.0.1:P -tls 127.0.0.1:Q -cert cert.pem -key key.pem -log access.log
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
)

// The static file's modification time, fixed so that a test can ask for a 304 with it.
var modified = time.Date(2017, 7, 14, 2, 40, 0, 0, time.UTC)

var body = []byte("hello roster\n")

type logged struct {
	http.ResponseWriter
	status int
}

func (l *logged) WriteHeader(status int) {
	if l.status == 0 {
		l.status = status
	}
	l.ResponseWriter.WriteHeader(status)
}

func (l *logged) Write(b []byte) (int, error) {
	if l.status == 0 {
		l.status = http.StatusOK
	}
	return l.ResponseWriter.Write(b)
}

func (l *logged) Flush() {
	if f, ok := l.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func routes(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/nocontent":
		w.WriteHeader(http.StatusNoContent)
	case "/chunked":
		// Flushed in two parts: no length is known when the head goes out.
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte("hello "))
		w.(http.Flusher).Flush()
		w.Write([]byte("chunked\n"))
	case "/close":
		// net/http ends an HTTP/1.1 connection after a response that says so.
		w.Header().Set("Connection", "close")
		w.Write(body)
	case "/post":
		// Reading the body is what makes net/http send 100 Continue to a client that waits.
		got, _ := io.ReadAll(r.Body)
		w.Write(got)
	default:
		http.ServeContent(w, r, "index.html", modified, bytes.NewReader(body))
	}
}

func main() {
	listen := flag.String("listen", "127.0.0.1:8080", "plain address: HTTP/1.1 and h2c")
	tlsAddr := flag.String("tls", "", "TLS address: HTTP/1.1 and h2 by ALPN")
	cert := flag.String("cert", "", "certificate PEM")
	key := flag.String("key", "", "key PEM")
	logPath := flag.String("log", "access.log", "access log")
	flag.Parse()
	out, err := os.OpenFile(*logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		log.Fatal(err)
	}
	var mu sync.Mutex
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l := &logged{ResponseWriter: w}
		routes(l, r)
		if l.status == 0 {
			l.status = http.StatusOK
		}
		line := fmt.Sprintf("%d %s %s %s\n", l.status, r.Method, r.URL.Path, strings.TrimSpace(r.Proto))
		mu.Lock()
		out.WriteString(line)
		mu.Unlock()
	})
	plain := &http.Server{Addr: *listen, Handler: handler, Protocols: new(http.Protocols)}
	plain.Protocols.SetHTTP1(true)
	plain.Protocols.SetUnencryptedHTTP2(true)
	errs := make(chan error, 2)
	go func() { errs <- plain.ListenAndServe() }()
	if *tlsAddr != "" {
		secure := &http.Server{Addr: *tlsAddr, Handler: handler}
		go func() { errs <- secure.ListenAndServeTLS(*cert, *key) }()
	}
	log.Fatal(<-errs)
}
