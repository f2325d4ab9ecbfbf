//go:build !race

package routing

const raceBuild = false
