// Command hello is the static program archive_test.go puts into an image.
package main

import "fmt"

func main() { fmt.Println("hello from the image") }
