package linuxns

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

func uintptrOf(h *unix.CapUserHeader) uintptr   { return uintptr(unsafe.Pointer(h)) }
func uintptrOfData(d *unix.CapUserData) uintptr { return uintptr(unsafe.Pointer(d)) }
