package image

import (
	"archive/tar"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// skipContents are top-level directories whose contents never go into an
// image: the engine provides /dev, /proc and /sys itself.
var skipContents = map[string]bool{"dev": true, "proc": true, "sys": true}

// WriteTar writes the root filesystem in dir to w as a tar stream with
// numeric owners, preserving modes, symlinks, hard links and device nodes.
// The contents of /dev, /proc and /sys are left out, as are sockets.
// Extended attributes (file capabilities) are not carried over; a minbase
// Python rootfs has none.
func WriteTar(ctx context.Context, w io.Writer, dir string) error {
	tw := tar.NewWriter(w)
	type inode struct{ dev, ino uint64 }
	links := map[inode]string{}
	buf := make([]byte, 256<<10)
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		if rel == "." {
			rel = "./"
		} else if parent := filepath.Dir(rel); skipContents[parent] {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if fi.Mode()&fs.ModeSocket != 0 {
			return nil
		}
		var target string
		if fi.Mode()&fs.ModeSymlink != 0 {
			if target, err = os.Readlink(path); err != nil {
				return err
			}
		}
		hdr, err := tar.FileInfoHeader(fi, target)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		hdr.Name = filepath.ToSlash(rel)
		if fi.IsDir() && rel != "./" {
			hdr.Name += "/"
		}
		// Numeric ids only: the host's user names mean nothing in the image.
		hdr.Uname, hdr.Gname = "", ""
		hdr.AccessTime, hdr.ChangeTime = time.Time{}, time.Time{}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && fi.Mode().IsRegular() && st.Nlink > 1 {
			id := inode{uint64(st.Dev), st.Ino}
			if first, ok := links[id]; ok {
				hdr.Typeflag, hdr.Linkname, hdr.Size = tar.TypeLink, first, 0
			} else {
				links[id] = hdr.Name
			}
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if hdr.Typeflag != tar.TypeReg || hdr.Size == 0 {
			return nil
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		n, err := io.CopyBuffer(tw, io.LimitReader(f, hdr.Size), buf)
		if err == nil && n != hdr.Size {
			err = fmt.Errorf("%s changed size while being archived", path)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("archiving %s: %w", dir, err)
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("archiving %s: %w", dir, err)
	}
	return nil
}
