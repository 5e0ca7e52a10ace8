# attack: net-unix-sockets
# category: network
# expect: blocked: the host's control sockets (docker, podman, containerd, dbus, the test's private dockerd) are not in the sandbox's filesystem (ENOENT)
# parallel: yes
paths = ["/var/run/docker.sock", "/run/docker.sock", "/run/podman/podman.sock", "/run/containerd/containerd.sock",
         "/run/user/0/podman/podman.sock", "/var/run/dbus/system_bus_socket", "/run/systemd/private",
         "/tmp/.X11-unix/X0", "/run/runc", "/var/run/crio/crio.sock"]
if HOST.get("docker_socket"):
    paths.append(HOST["docker_socket"])
for p in paths:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(2)
    try:
        s.connect(p)
        escaped("connected to %s" % p)
    except OSError as e:
        blocked(ename(e.errno))
    finally:
        s.close()
done()
