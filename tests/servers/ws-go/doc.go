// Package wsservers pins gorilla/websocket for the WebSocket tests: scripts/ws-servers.sh builds
// the module's own echo and chat examples (examples/echo/server.go, examples/chat) from the
// module cache at the version go.sum pins, so the servers strain is tested against are
// gorilla's, unchanged.
package wsservers

import _ "github.com/gorilla/websocket"
