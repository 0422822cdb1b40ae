// A closed-loop WebSocket echo client on gorilla/websocket, the peer bench/ws.py measures strain
// against: -c connections, each a goroutine that sends a message and waits for its echo, for -d.
// It prints one line, "messages N", the echoes received in the measured time.
package main

import (
	"flag"
	"fmt"
	"log"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
)

func main() {
	url := flag.String("url", "ws://127.0.0.1:8080/", "the echo server")
	conns := flag.Int("c", 100, "connections")
	dur := flag.Duration("d", 10*time.Second, "how long")
	size := flag.Int("size", 16, "message bytes")
	flag.Parse()

	msg := make([]byte, *size)
	for i := range msg {
		msg[i] = byte('a' + i%26)
	}
	var done atomic.Int64
	var stop atomic.Bool
	var wg sync.WaitGroup
	ready := make(chan struct{})
	for i := 0; i < *conns; i++ {
		c, _, err := websocket.DefaultDialer.Dial(*url, nil)
		if err != nil {
			log.Fatalf("dial: %v", err)
		}
		wg.Add(1)
		go func(c *websocket.Conn) {
			defer wg.Done()
			defer c.Close()
			<-ready
			for !stop.Load() {
				if err := c.WriteMessage(websocket.BinaryMessage, msg); err != nil {
					return
				}
				if _, _, err := c.ReadMessage(); err != nil {
					return
				}
				done.Add(1)
			}
		}(c)
	}
	close(ready)
	time.Sleep(*dur)
	stop.Store(true)
	n := done.Load()
	wg.Wait()
	fmt.Printf("messages %d\n", n)
}
