// Command pulumi-resource-kubernetes is the Pulumi Kubernetes resource provider, built from the
// Go module proxy. It makes the same call as upstream's provider/cmd/pulumi-resource-kubernetes/main.go;
// that package cannot be built from the module zip because the two *-embed.json files it embeds are
// generated (go:generate) and git-ignored upstream. tools/ensure-pulumi-binaries.sh writes them here
// from the module's committed schema.json and terraform-mapping.json before building.
package main

import (
	_ "embed"

	"github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/provider"
	"github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version"
)

//go:embed schema-embed.json
var pulumiSchema []byte

//go:embed terraform-mapping-embed.json
var terraformMapping []byte

func main() {
	provider.Serve("kubernetes", version.Version, pulumiSchema, terraformMapping)
}
