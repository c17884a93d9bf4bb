package netconn

import (
	"io"
	"net"
	"strings"
	"testing"
)

// On a TCP connection, ReadFrom copies all of r and CloseWrite ends the
// writing side: the peer reads the bytes, then EOF, while the
// connection still reads. On a connection that can do neither (a pipe),
// ReadFrom copies through Write and CloseWrite does nothing.
func TestPassesThrough(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- err.Error()
			return
		}
		defer c.Close()
		b, _ := io.ReadAll(c) // ends at the client's CloseWrite
		_, _ = c.Write([]byte("ok"))
		got <- string(b)
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if n, err := ReadFrom(c, strings.NewReader("hello")); err != nil || n != 5 {
		t.Fatalf("ReadFrom: %d, %v", n, err)
	}
	if err := CloseWrite(c); err != nil {
		t.Fatal(err)
	}
	if s := <-got; s != "hello" {
		t.Fatalf("the peer read %q", s)
	}
	if b, err := io.ReadAll(c); err != nil || string(b) != "ok" {
		t.Fatalf("after CloseWrite the connection still reads: %q, %v", b, err)
	}

	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	go func() { _, _ = io.ReadAll(b) }()
	if n, err := ReadFrom(a, strings.NewReader("pipe")); err != nil || n != 4 {
		t.Fatalf("ReadFrom on a pipe: %d, %v", n, err)
	}
	if err := CloseWrite(a); err != nil {
		t.Fatalf("CloseWrite on a pipe: %v", err)
	}
}
