package container

import (
	"bufio"
	"io"
)

func logLines(r io.Reader, f func(string)) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), 64<<10)
	for sc.Scan() {
		f(sc.Text())
	}
}
