// Package netconn keeps, for a net.Conn wrapper (serve's listeners wrap
// each connection), what net/http uses of the connection underneath
// beyond net.Conn's methods: its own copy (a TCP connection's sendfile or
// splice) and its half-close.
package netconn

import (
	"io"
	"net"
)

// ReadFrom copies r to c through c's own ReadFrom when it has one (a TCP
// connection's sendfile or splice; net/http copies file bodies through
// it), else through its Write.
func ReadFrom(c net.Conn, r io.Reader) (int64, error) {
	if rf, ok := c.(io.ReaderFrom); ok {
		return rf.ReadFrom(r)
	}
	return io.Copy(struct{ io.Writer }{c}, r)
}

// CloseWrite shuts down c's writing side when c can (TCP): net/http does
// before closing a connection whose request it did not read to its end,
// so that the client reads the answer. It does nothing on a connection
// that cannot.
func CloseWrite(c net.Conn) error {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
