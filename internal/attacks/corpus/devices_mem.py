# attack: devices-mem
# category: devices
# expect: blocked: /dev has only null, zero, full, random, urandom and tty: /dev/mem, /dev/kmem, /dev/port, disks, /dev/kvm do not exist, and mknod is refused (no CAP_MKNOD, nodev tmpfs)
# gvisor: contained: device files in gVisor are the sentry's
# parallel: yes
for dev in ("/dev/mem", "/dev/kmem", "/dev/port", "/dev/sda", "/dev/vda", "/dev/nvme0n1", "/dev/kvm",
            "/dev/fuse", "/dev/net/tun", "/dev/loop0", "/dev/dm-0", "/dev/hwrng", "/dev/cpu/0/msr"):
    try_open(dev, os.O_RDWR, "opened %s" % dev)
for path, mode, dev in (("/tmp/mem", 0o20600, os.makedev(1, 1)), ("/tmp/vda", 0o60600, os.makedev(254, 0)),
                        ("/dev/shm/mem", 0o20600, os.makedev(1, 1))):
    try:
        os.mknod(path, mode, dev)
    except OSError as e:
        blocked("mknod " + ename(e.errno))
        continue
    try:
        fd = os.open(path, os.O_RDONLY)
        os.close(fd)
        escaped("created and opened device node %s" % path)
    except OSError as e:
        blocked("device node created but unusable (%s)" % ename(e.errno))
    os.unlink(path)
done()
