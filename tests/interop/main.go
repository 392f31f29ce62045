// ttrpc-peer: containerd's Go ttrpc (Debian's golang-github-containerd-ttrpc-dev)
// against kin, to prove wire compatibility with an implementation not
// written here, and to give `make bench` a peer to compare with.
//
//	ttrpc-peer client SOCKET   call kin.v1.Health on kin; exit 0 if all is as expected
//	ttrpc-peer server SOCKET   serve kin.v1.Health (Check, Version) until killed
//
// The kin.v1 messages are declared by hand with protobuf struct tags (as
// ttrpc's own types.go does), matching rpc/kin.proto field for field.
package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/containerd/ttrpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

type CheckRequest struct{}

func (m *CheckRequest) Reset()         { *m = CheckRequest{} }
func (m *CheckRequest) String() string { return "CheckRequest{}" }
func (*CheckRequest) ProtoMessage()    {}

type CheckResponse struct {
	Status int32 `protobuf:"varint,1,opt,name=status,proto3"`
}

func (m *CheckResponse) Reset()         { *m = CheckResponse{} }
func (m *CheckResponse) String() string { return fmt.Sprintf("%+v", *m) }
func (*CheckResponse) ProtoMessage()    {}

type VersionRequest struct{}

func (m *VersionRequest) Reset()         { *m = VersionRequest{} }
func (m *VersionRequest) String() string { return "VersionRequest{}" }
func (*VersionRequest) ProtoMessage()    {}

type VersionResponse struct {
	Version       string `protobuf:"bytes,1,opt,name=version,proto3"`
	Role          string `protobuf:"bytes,2,opt,name=role,proto3"`
	Hostname      string `protobuf:"bytes,3,opt,name=hostname,proto3"`
	KernelRelease string `protobuf:"bytes,4,opt,name=kernel_release,proto3"`
	UptimeNs      uint64 `protobuf:"varint,5,opt,name=uptime_ns,proto3"`
	Zone          string `protobuf:"bytes,6,opt,name=zone,proto3"`
	Pid           uint32 `protobuf:"varint,7,opt,name=pid,proto3"`
}

func (m *VersionResponse) Reset()         { *m = VersionResponse{} }
func (m *VersionResponse) String() string { return fmt.Sprintf("%+v", *m) }
func (*VersionResponse) ProtoMessage()    {}

const serving = 1

func fail(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "ttrpc-peer: "+format+"\n", args...)
	os.Exit(1)
}

func runClient(path string) {
	conn, err := net.DialTimeout("unix", path, 5*time.Second)
	if err != nil {
		fail("dial %s: %v", path, err)
	}
	client := ttrpc.NewClient(conn)
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ctx = ttrpc.WithMetadata(ctx, ttrpc.MD{"kin-target": []string{""}})

	var check CheckResponse
	if err := client.Call(ctx, "kin.v1.Health", "Check", &CheckRequest{}, &check); err != nil {
		fail("Health.Check: %v", err)
	}
	if check.Status != serving {
		fail("Health.Check: status %d, want SERVING (1)", check.Status)
	}
	fmt.Println("Check: SERVING")

	var v VersionResponse
	if err := client.Call(ctx, "kin.v1.Health", "Version", &VersionRequest{}, &v); err != nil {
		fail("Health.Version: %v", err)
	}
	if v.Version == "" || v.Role == "" || v.KernelRelease == "" || v.Pid == 0 {
		fail("Health.Version: incomplete answer %+v", v)
	}
	fmt.Printf("Version: %s role %s hostname %s kernel %s uptime %dns pid %d\n",
		v.Version, v.Role, v.Hostname, v.KernelRelease, v.UptimeNs, v.Pid)

	// kin's errors arrive as gRPC statuses.
	err = client.Call(ctx, "kin.v1.Health", "Nope", &CheckRequest{}, &check)
	if status.Code(err) != codes.Unimplemented {
		fail("Health.Nope: got %v, want Unimplemented", err)
	}
	fmt.Printf("Nope: %v\n", err)

	// Many calls in flight on one connection, from many goroutines.
	errs := make(chan error, 200)
	for i := 0; i < 200; i++ {
		go func() {
			var r CheckResponse
			errs <- client.Call(ctx, "kin.v1.Health", "Check", &CheckRequest{}, &r)
		}()
	}
	for i := 0; i < 200; i++ {
		if err := <-errs; err != nil {
			fail("concurrent Check: %v", err)
		}
	}
	fmt.Println("200 concurrent calls: ok")
}

func runServer(path string) {
	os.Remove(path)
	l, err := net.Listen("unix", path)
	if err != nil {
		fail("listen %s: %v", path, err)
	}
	s, err := ttrpc.NewServer()
	if err != nil {
		fail("server: %v", err)
	}
	start := time.Now()
	s.Register("kin.v1.Health", map[string]ttrpc.Method{
		"Check": func(ctx context.Context, unmarshal func(interface{}) error) (interface{}, error) {
			var req CheckRequest
			if err := unmarshal(&req); err != nil {
				return nil, err
			}
			return &CheckResponse{Status: serving}, nil
		},
		"Version": func(ctx context.Context, unmarshal func(interface{}) error) (interface{}, error) {
			var req VersionRequest
			if err := unmarshal(&req); err != nil {
				return nil, err
			}
			h, _ := os.Hostname()
			return &VersionResponse{Version: "go", Role: "peer", Hostname: h,
				UptimeNs: uint64(time.Since(start)), Pid: uint32(os.Getpid())}, nil
		},
	})
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-sig
		s.Close()
		os.Remove(path)
		os.Exit(0)
	}()
	if err := s.Serve(context.Background(), l); err != nil && err != ttrpc.ErrServerClosed {
		fail("serve: %v", err)
	}
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: ttrpc-peer client|server SOCKET")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "client":
		runClient(os.Args[2])
	case "server":
		runServer(os.Args[2])
	default:
		fmt.Fprintln(os.Stderr, "usage: ttrpc-peer client|server SOCKET")
		os.Exit(2)
	}
}
