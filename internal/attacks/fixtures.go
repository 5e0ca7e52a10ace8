package attacks

import (
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/go-json-experiment/json"
)

// secretEnv is the variable planted in codemode's own environment; no
// sandbox and no downstream server may ever see it.
const secretEnv = "CODEMODE_ATTACK_SECRET"

// The egress secret: its placeholder is in every sandbox's environment,
// and it is bound to a host that does not exist, so no request may ever
// carry its real value back.
const (
	egressSecretEnv  = "CODEMODE_ATTACK_EGRESS_TOKEN"
	egressSecretHost = "secret.invalid"
	// A second secret is bound to the echo server itself: the proxy puts
	// its real value in, and the echo sends it back.
	egressEchoSecretEnv = "CODEMODE_ATTACK_EGRESS_ECHO_TOKEN"
)

// upstreamName is the fixture MCP server's name in the planted config.
const upstreamName = "fixture"

// sandboxDataDir is where sandboxes see the fixtures' data directory.
const sandboxDataDir = "/workspace/data"

// fixtures is everything the host plants for the attacks to aim at, and
// the host-side observers (listeners) that tell whether something got out.
type fixtures struct {
	root     string
	home     string // codemode's HOME during the run
	stateDir string
	dataDir  string // mounted read-write at /workspace/data
	config   string // the mcpServers file codemode is started with
	rootFile string // name of the host-owned file in dataDir
	rootData []byte

	markers map[string]string // what -> host path of a file holding a secret
	secrets map[string]string // secret value -> what it is (output must contain none)

	victimKey   string
	victimFiles []string

	tcpPort, udpPort int
	abstract         string
	// egressPort is the loopback HTTP server on the egress allow-list; it
	// answers with what it received (host, credentials), so attacks see
	// what the proxy let through.
	egressPort       int
	egressToken      string // the real value of the egress secret (never in output)
	egressEchoToken  string // the real value of the secret bound to the echo server
	tcpHits, udpHits atomic.Int64
	abstractHits     atomic.Int64
	closers          []func()
	wg               sync.WaitGroup
}

func token(prefix string) string {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return prefix + hex.EncodeToString(b)
}

// newFixtures plants the host side under a new directory in tmp.
func newFixtures(tmp string) (*fixtures, error) {
	root, err := os.MkdirTemp(tmp, "codemode-attacks-")
	if err != nil {
		return nil, fmt.Errorf("attack fixtures: %w", err)
	}
	f := &fixtures{root: root, markers: map[string]string{}, secrets: map[string]string{}}
	if err := f.plant(); err != nil {
		f.close()
		return nil, fmt.Errorf("attack fixtures: %w", err)
	}
	return f, nil
}

// heartbeat is the file attack a's busy processes append to (see
// heartbeat() in corpus/_lib.py), as the host and as the sandbox see it.
func (f *fixtures) heartbeat(a Attack) (host, inside string) {
	name := "heartbeat-" + a.Name
	return filepath.Join(f.dataDir, name), sandboxDataDir + "/" + name
}

func (f *fixtures) secret(what string) string {
	s := token("cmsecret-")
	f.secrets[s] = what
	return s
}

func writeFile(path, content string, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(content), mode)
}

func (f *fixtures) plant() error {
	// The root is searchable by everyone because the data directory under
	// it is mounted into the sandbox (whose user is not root); home and the
	// state directory stay private, as they are on a real host.
	if err := os.Chmod(f.root, 0o755); err != nil {
		return err
	}
	f.home = filepath.Join(f.root, "home")
	f.stateDir = filepath.Join(f.root, "state")
	f.dataDir = filepath.Join(f.root, "data")
	for _, d := range []string{f.home, f.stateDir} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return err
		}
	}
	if err := os.Mkdir(f.dataDir, 0o755); err != nil {
		return err
	}
	// World-writable with the sticky bit, like a shared drop directory:
	// the sandbox may add files but must not touch the host's own.
	if err := os.Chmod(f.dataDir, 0o777|os.ModeSticky); err != nil {
		return err
	}
	f.rootFile = "host-owned.txt"
	f.rootData = []byte("owned by the host; the sandbox must not change, move or link this file\n")
	if err := os.WriteFile(filepath.Join(f.dataDir, f.rootFile), f.rootData, 0o644); err != nil {
		return err
	}

	f.markers["home"] = filepath.Join(f.home, "codemode-home-marker.txt")
	f.markers["ssh"] = filepath.Join(f.home, ".ssh", "id_ed25519")
	f.markers["state"] = filepath.Join(f.stateDir, "codemode-state-marker.txt")
	if err := writeFile(f.markers["home"], f.secret("a file in codemode's home")+"\n", 0o600); err != nil {
		return err
	}
	key := "-----BEGIN OPENSSH PRIVATE KEY-----\n" + f.secret("codemode's SSH private key") + "\n-----END OPENSSH PRIVATE KEY-----\n"
	if err := writeFile(f.markers["ssh"], key, 0o600); err != nil {
		return err
	}
	if err := writeFile(f.markers["state"], f.secret("a file in codemode's state directory")+"\n", 0o600); err != nil {
		return err
	}

	python, err := exec.LookPath("python3")
	if err != nil {
		return errors.New("the upstream fixture needs python3 on the host")
	}
	script, err := corpus.ReadFile("corpus/_downstream.py")
	if err != nil {
		return err
	}
	upstream := filepath.Join(f.root, "upstream.py")
	if err := os.WriteFile(upstream, script, 0o644); err != nil {
		return err
	}
	cfg, err := json.Marshal(map[string]any{"mcpServers": map[string]any{
		upstreamName: map[string]any{
			"command": python, "args": []string{upstream},
			"description": "the attack suite's downstream server",
			"env":         map[string]string{"FIXTURE_API_TOKEN": f.secret("a token in codemode's MCP config")},
		},
	}})
	if err != nil {
		return err
	}
	f.config = filepath.Join(f.home, ".config", "codemode-attacks", "mcp.json")
	if err := writeFile(f.config, string(cfg), 0o600); err != nil {
		return err
	}

	f.egressToken = f.secret("the real value of an egress secret")
	f.egressEchoToken = f.secret("the real value of the egress secret bound to the echo server")
	f.victimKey = token("victim-notes-")
	f.victimFiles = []string{"/workspace/victim-secret.txt", "/tmp/victim-secret.txt", "/dev/shm/victim-secret.txt"}
	return f.listen()
}

// listen starts the host listeners the network attacks aim at: TCP and UDP
// on every address and an abstract unix socket. Any connection, datagram
// or accept is counted; the count must stay zero.
func (f *fixtures) listen() error {
	tcp, err := net.Listen("tcp", ":0")
	if err != nil {
		return err
	}
	f.closers = append(f.closers, func() { tcp.Close() })
	f.tcpPort = tcp.Addr().(*net.TCPAddr).Port
	udp, err := net.ListenPacket("udp", ":0")
	if err != nil {
		return err
	}
	f.closers = append(f.closers, func() { udp.Close() })
	f.udpPort = udp.LocalAddr().(*net.UDPAddr).Port
	f.abstract = token("codemode-attack-")
	unix, err := net.Listen("unix", "@"+f.abstract)
	if err != nil {
		return err
	}
	f.closers = append(f.closers, func() { unix.Close() })
	accept := func(l net.Listener, hits *atomic.Int64) {
		defer f.wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			hits.Add(1)
			c.Close()
		}
	}
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	f.egressPort = echo.Addr().(*net.TCPAddr).Port
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var out io.Writer = w
		if strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") { // an answer the proxy must decode to scrub
			w.Header().Set("Content-Encoding", "gzip")
			zw := gzip.NewWriter(w)
			defer zw.Close()
			out = zw
		}
		w.Header().Set("X-Echo-Authorization", r.Header.Get("Authorization"))
		json.MarshalWrite(out, map[string]string{"host": r.Host, "proxy_authorization": r.Header.Get("Proxy-Authorization"),
			"authorization": r.Header.Get("Authorization"), "path": r.URL.RequestURI()})
	})}
	f.closers = append(f.closers, func() { srv.Close() })
	go srv.Serve(echo)
	f.wg.Add(3)
	go accept(tcp, &f.tcpHits)
	go accept(unix, &f.abstractHits)
	go func() {
		defer f.wg.Done()
		buf := make([]byte, 2048)
		for {
			if _, _, err := udp.ReadFrom(buf); err != nil {
				return
			}
			f.udpHits.Add(1)
		}
	}()
	return nil
}

// hits is the number of connections and datagrams the host's listeners
// have seen so far.
func (f *fixtures) hits() int64 {
	return f.tcpHits.Load() + f.udpHits.Load() + f.abstractHits.Load()
}

// found returns what the secrets in data are, if any.
func (f *fixtures) found(data []byte) []string {
	var out []string
	for s, what := range f.secrets {
		if bytes.Contains(data, []byte(s)) {
			out = append(out, what)
		}
	}
	return out
}

func (f *fixtures) close() {
	for _, c := range f.closers {
		c()
	}
	f.wg.Wait()
	os.RemoveAll(f.root)
}

// hostIPs are the host's non-loopback addresses, which the network attacks
// also aim at.
func hostIPs() []string {
	var out []string
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			out = append(out, n.IP.String())
		}
	}
	return out
}

// dockerSocket is the docker control socket the host uses, if any.
func dockerSocket(environ []string) string {
	for _, kv := range environ {
		if v, ok := strings.CutPrefix(kv, "DOCKER_HOST=unix://"); ok {
			return v
		}
	}
	if _, err := os.Stat("/var/run/docker.sock"); err == nil {
		return "/var/run/docker.sock"
	}
	return ""
}

// machineID is /etc/machine-id of the host ("" if absent).
func machineID() string {
	data, _ := os.ReadFile("/etc/machine-id")
	return strings.TrimSpace(string(data))
}

// victimSetup is the code the victim session runs first: files in each of
// its scratch places, a process holding one open, and a memory entry.
func (f *fixtures) victimSetup(secret string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "import subprocess, sys\nSECRET = %q\n", secret)
	for _, p := range f.victimFiles {
		fmt.Fprintf(&b, "open(%q, 'w').write(SECRET + '\\n')\n", p)
	}
	fmt.Fprintf(&b, "held = open(%q)\n", f.victimFiles[0])
	b.WriteString("holder = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(3600)'], stdin=held)\n")
	fmt.Fprintf(&b, "save_memory(%q, SECRET)\nprint('victim ready')\n", f.victimKey)
	return b.String()
}

// checkVictim is the code the victim session runs after the attacks: its
// memory must be unchanged and no attacker's tool may be among its own.
func (f *fixtures) checkVictim() string {
	return fmt.Sprintf(`from mcp import state
print("memory", load_memory(%q) == SECRET)
print("tools", sorted(state.list_saved_tools()))
`, f.victimKey)
}
