package cluster

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// process is one server child process whose output goes to a log file.
type process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{} // closed when the process has exited and been reaped
	waitErr error         // valid after done is closed
}

// startProcess starts bin with args, appending stdout and stderr to logPath
// after a marker line. The child gets the environment without ETCD_*
// variables (etcd would read them as flags) and dies with the test binary.
func startProcess(name, bin string, args []string, logPath string) (*process, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("cluster: %s log: %w", name, err)
	}
	fmt.Fprintf(f, "==== lifecycle-e2e: starting %s at %s\n==== %s %s\n",
		name, time.Now().Format(time.RFC3339Nano), bin, strings.Join(args, " "))
	cmd := exec.Command(bin, args...)
	cmd.Stdout = f
	cmd.Stderr = f
	cmd.Env = childEnv(os.Environ())
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("cluster: start %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

// childEnv drops ETCD_* variables: etcd treats every one as a flag.
func childEnv(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if strings.HasPrefix(kv, "ETCD_") {
			continue
		}
		out = append(out, kv)
	}
	return out
}

func (p *process) pid() int { return p.cmd.Process.Pid }

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// exitError describes how the process ended; call only after exited().
func (p *process) exitError() error {
	if p.waitErr == nil {
		return fmt.Errorf("%s (pid %d) exited with status 0", p.name, p.pid())
	}
	return fmt.Errorf("%s (pid %d) exited: %v", p.name, p.pid(), p.waitErr)
}

// stop sends SIGTERM and waits up to timeout, then sends SIGKILL and waits
// for the exit. It reports whether SIGKILL was needed.
func (p *process) stop(timeout time.Duration) (killed bool) {
	if p.exited() {
		return false
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-p.done:
		return false
	case <-t.C:
	}
	p.kill()
	return true
}

// kill sends SIGKILL and waits for the exit.
func (p *process) kill() {
	if !p.exited() {
		_ = p.cmd.Process.Kill()
	}
	<-p.done
}

// freePorts asks the kernel for n distinct free TCP ports on 127.0.0.1: it
// listens on :0 n times, then closes the listeners. Another process may take
// a port before the server binds it; Start retries on "address already in use".
func freePorts(n int) ([]int, error) {
	ls := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("cluster: free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// tailFile returns the last n lines of the file (reading at most its last 256 KiB).
func tailFile(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)\n", path, err)
	}
	defer f.Close()
	const maxRead = 256 << 10
	if fi, err := f.Stat(); err == nil && fi.Size() > maxRead {
		if _, err := f.Seek(-maxRead, io.SeekEnd); err != nil {
			return fmt.Sprintf("(cannot read %s: %v)\n", path, err)
		}
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)\n", path, err)
	}
	return lastLines(b, n)
}

func lastLines(b []byte, n int) string {
	b = bytes.TrimRight(b, "\n")
	if len(b) == 0 || n <= 0 {
		return ""
	}
	i := len(b)
	for ; n > 0; n-- {
		j := bytes.LastIndexByte(b[:i], '\n')
		if j < 0 {
			i = 0
			break
		}
		i = j
	}
	if i > 0 {
		i++ // skip the newline itself
	}
	return string(b[i:]) + "\n"
}

// logHasAddrInUse reports whether the end of a log says a port was taken.
func logHasAddrInUse(path string) bool {
	return strings.Contains(tailFile(path, 60), "address already in use")
}
