package artifacts

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"

	_ "image/gif" // decoders for show_image(); the result is always PNG
	_ "image/jpeg"

	"golang.org/x/image/draw"
	_ "golang.org/x/image/webp"
)

// Image is an image ready for an MCP ImageContent.
type Image struct {
	MIMEType   string `json:"mimeType"`
	Width      int    `json:"width"`
	Height     int    `json:"height"`
	Bytes      int    `json:"bytes"`
	Downscaled bool   `json:"downscaled,omitempty"`
	Name       string `json:"name,omitempty"`
	Data       []byte `json:"-"`
}

// Budget bounds an image.
type Budget struct {
	MaxPixels int // width*height (default 1,000,000)
	MaxBytes  int // encoded size (default 1 MiB)
}

// maxDecoded bounds the memory one decoded image may take on the host: a
// small compressed file can announce a huge canvas (a decompression bomb).
const maxDecoded = 128 << 20

// decodedSize is what decoding an image of cfg takes in memory.
func decodedSize(cfg image.Config) int64 {
	bpp := int64(4)
	switch cfg.ColorModel {
	case color.RGBA64Model, color.NRGBA64Model:
		bpp = 8
	}
	return int64(cfg.Width) * int64(cfg.Height) * bpp
}

// FitImage decodes data (PNG, JPEG, GIF, WebP), scales it down until it fits
// the budget, and returns it as PNG. Images already within the budget that
// are PNG pass through untouched.
func FitImage(data []byte, b Budget) (Image, error) {
	if b.MaxPixels <= 0 {
		b.MaxPixels = 1_000_000
	}
	if b.MaxBytes <= 0 {
		b.MaxBytes = 1 << 20
	}
	cfg, format, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return Image{}, fmt.Errorf("decoding image: %w", err)
	}
	if cfg.Width <= 0 || cfg.Height <= 0 || decodedSize(cfg) > maxDecoded {
		return Image{}, fmt.Errorf("image of %dx%d pixels refused: decoding it would take over %d MiB", cfg.Width, cfg.Height, maxDecoded>>20)
	}
	if format == "png" && cfg.Width*cfg.Height <= b.MaxPixels && len(data) <= b.MaxBytes {
		return Image{MIMEType: "image/png", Width: cfg.Width, Height: cfg.Height, Bytes: len(data), Data: data}, nil
	}
	src, _, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		return Image{}, fmt.Errorf("decoding image: %w", err)
	}
	w, h := cfg.Width, cfg.Height
	scale := math.Min(1, math.Sqrt(float64(b.MaxPixels)/float64(w*h)))
	for attempt := 0; attempt < 12; attempt++ {
		nw, nh := max(1, int(float64(w)*scale)), max(1, int(float64(h)*scale))
		img := src
		if nw != w || nh != h {
			dst := image.NewRGBA(image.Rect(0, 0, nw, nh))
			draw.CatmullRom.Scale(dst, dst.Bounds(), src, src.Bounds(), draw.Src, nil)
			img = dst
		}
		var buf bytes.Buffer
		enc := png.Encoder{CompressionLevel: png.BestCompression}
		if err := enc.Encode(&buf, img); err != nil {
			return Image{}, err
		}
		if buf.Len() <= b.MaxBytes {
			return Image{MIMEType: "image/png", Width: nw, Height: nh, Bytes: buf.Len(), Data: buf.Bytes(), Downscaled: nw != w || nh != h}, nil
		}
		scale *= 0.75
	}
	return Image{}, errors.New("image does not fit the byte budget even when downscaled")
}
