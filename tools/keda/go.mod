// KEDA's CRD manifests (config/crd/bases), read from its module source; nothing of it is built.
module supersonic-interlink/tools/keda

go 1.24.0

require github.com/kedacore/keda/v2 v2.21.0
