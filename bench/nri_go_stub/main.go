// A Go NRI plugin on the official library (containerd/nri v0.6.1 pkg/stub), used only
// as the baseline in bench/nri_latency.py. Its CreateContainer does what mokka's does
// for a devices-annotated pod, so the two are timed on comparable work: look at the
// pod annotation, find PATH in the container's env, answer two bind mounts + 6 env vars
// (the same 518-byte adjustment as mokka's). For a pod asking for IMEX channels it
// adds every channel node found under --imex-channel-host-path at start-up, as mokka
// does (a node has up to 2048: a ~130 KB adjustment). Built by bench/fetch-go-baseline.sh.
package main

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/containerd/nri/pkg/api"
	"github.com/containerd/nri/pkg/stub"
	"github.com/sirupsen/logrus"
)

const root = "/opt/nvml-mock"

type channel struct {
	path                string
	major, minor        int64
	mode                uint32
	uid, gid            uint32
}

type plugin struct{ channels []channel }

// scanChannels lists the IMEX channel char nodes in dir, in natural order (channel2 < channel10).
func scanChannels(dir string) []channel {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []channel
	for _, e := range entries {
		n := e.Name()
		if !strings.HasPrefix(n, "channel") {
			continue
		}
		var st syscall.Stat_t
		if syscall.Lstat(filepath.Join(dir, n), &st) != nil || st.Mode&syscall.S_IFMT != syscall.S_IFCHR {
			continue
		}
		out = append(out, channel{path: "/dev/nvidia-caps-imex-channels/" + n,
			major: int64((st.Rdev >> 8) & 0xfff), minor: int64((st.Rdev & 0xff) | ((st.Rdev >> 12) & 0xfff00)),
			mode: st.Mode & 0o7777, uid: st.Uid, gid: st.Gid})
	}
	num := func(p string) int { i, _ := strconv.Atoi(p[strings.LastIndex(p, "channel")+7:]); return i }
	sort.Slice(out, func(i, j int) bool { return num(out[i].path) < num(out[j].path) })
	return out
}

func (p plugin) CreateContainer(_ context.Context, pod *api.PodSandbox, ctr *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	adj := &api.ContainerAdjustment{}
	if pod.GetAnnotations()["nvml-mock.nvidia.com/imex-channels"] == "true" {
		for _, c := range p.channels {
			adj.AddDevice(&api.LinuxDevice{Path: c.path, Type: "c", Major: c.major, Minor: c.minor,
				FileMode: &api.OptionalFileMode{Value: c.mode},
				Uid:      &api.OptionalUInt32{Value: c.uid}, Gid: &api.OptionalUInt32{Value: c.gid}})
		}
	}
	if pod.GetAnnotations()["nvml-mock.nvidia.com/devices"] != "true" {
		return adj, nil, nil
	}
	path := "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	for _, kv := range ctr.GetEnv() {
		if strings.HasPrefix(kv, "PATH=") {
			path = kv[len("PATH="):]
		}
	}
	adj.AddMount(&api.Mount{Destination: root, Type: "bind", Source: "/var/lib/nvml-mock",
		Options: []string{"rbind", "rprivate", "nosuid", "nodev", "ro"}})
	adj.AddMount(&api.Mount{Destination: root + "/driver/config", Type: "bind",
		Source: "/var/lib/nvml-mock/driver/config", Options: []string{"rbind", "rprivate", "nosuid", "nodev"}})
	adj.AddEnv("PATH", root+"/driver/usr/bin:"+path)
	adj.AddEnv("LD_LIBRARY_PATH", root+"/driver/usr/lib64")
	adj.AddEnv("MOCK_NVML_CONFIG", root+"/driver/config/config.yaml")
	adj.AddEnv("MOCK_PCI_ROOT", root)
	adj.AddEnv("GFD_MACHINE_TYPE_FILE", root+"/driver/config/machine-type")
	adj.AddEnv("MOCK_IB", "off")
	return adj, nil, nil
}

func main() {
	socket := flag.String("socket-path", "/var/run/nri/nri.sock", "NRI socket")
	name := flag.String("plugin-name", "go-baseline", "plugin name")
	idx := flag.String("plugin-index", "10", "plugin index")
	imex := flag.String("imex-channel-host-path", "", "IMEX channel nodes to add for imex-channels pods")
	flag.Parse()
	logrus.SetLevel(logrus.ErrorLevel) // as mokka runs with --log-level=error in the bench
	s, err := stub.New(plugin{channels: scanChannels(*imex)}, stub.WithPluginName(*name), stub.WithPluginIdx(*idx),
		stub.WithSocketPath(*socket), stub.WithOnClose(func() { os.Exit(0) }))
	if err != nil {
		logrus.Fatalf("stub.New: %v", err)
	}
	if err := s.Run(context.Background()); err != nil {
		logrus.Fatalf("stub.Run: %v", err)
	}
}
