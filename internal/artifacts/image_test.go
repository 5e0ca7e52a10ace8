package artifacts

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"image"
	"image/color"
	"image/png"
	"strings"
	"testing"
)

// pngHeader is a PNG that announces a canvas (signature and IHDR only):
// enough for DecodeConfig, which is all a decompression bomb needs to be
// refused.
func pngHeader(w, h uint32, depth, colorType byte) []byte {
	var ihdr bytes.Buffer
	ihdr.WriteString("IHDR")
	binary.Write(&ihdr, binary.BigEndian, w)
	binary.Write(&ihdr, binary.BigEndian, h)
	ihdr.Write([]byte{depth, colorType, 0, 0, 0})
	var out bytes.Buffer
	out.WriteString("\x89PNG\r\n\x1a\n")
	binary.Write(&out, binary.BigEndian, uint32(ihdr.Len()-4))
	out.Write(ihdr.Bytes())
	binary.Write(&out, binary.BigEndian, crc32.ChecksumIEEE(ihdr.Bytes()))
	return out.Bytes()
}

func realPNG(t *testing.T, w, h int) []byte {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			img.Set(x, y, color.NRGBA{uint8(x), uint8(y), uint8(x ^ y), 255})
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestFitImage(t *testing.T) {
	tests := []struct {
		name       string
		data       []byte
		refused    string // substring of the error; "" = accepted
		maxPixels  int
		downscaled bool
	}{
		{name: "16-bit 8000x8000 bomb", data: pngHeader(8000, 8000, 16, 6), refused: "refused"},
		{name: "8-bit 6000x6000 over the decode bound", data: pngHeader(6000, 6000, 8, 6), refused: "refused"},
		{name: "zero width", data: pngHeader(0, 10, 8, 6), refused: "decoding image"},
		{name: "not an image", data: []byte("hello"), refused: "decoding image"},
		{name: "small PNG passes through", data: realPNG(t, 40, 30), maxPixels: 1_000_000},
		{name: "large PNG is scaled down", data: realPNG(t, 1200, 900), maxPixels: 100_000, downscaled: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			img, err := FitImage(tt.data, Budget{MaxPixels: tt.maxPixels})
			if tt.refused != "" {
				if err == nil || !strings.Contains(err.Error(), tt.refused) {
					t.Fatalf("FitImage error = %v, want one containing %q", err, tt.refused)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if img.Width*img.Height > tt.maxPixels || img.Downscaled != tt.downscaled {
				t.Errorf("got %dx%d downscaled=%v, want at most %d pixels, downscaled=%v", img.Width, img.Height, img.Downscaled, tt.maxPixels, tt.downscaled)
			}
			if _, err := png.Decode(bytes.NewReader(img.Data)); err != nil {
				t.Errorf("result is not a PNG: %v", err)
			}
		})
	}
}
