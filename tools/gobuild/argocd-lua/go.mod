module t9k-sdk.invalid/tools/argocd-lua

go 1.24.0

require (
	github.com/yuin/gopher-lua v1.1.2
	layeh.com/gopher-json v0.0.0-20190114024228-97fed8db8427
)
