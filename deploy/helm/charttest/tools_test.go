package charttest

import (
	_ "github.com/nats-io/jwt/v2"
	_ "github.com/nats-io/nkeys"
	_ "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	_ "helm.sh/helm/v3/pkg/chart/loader"
	_ "helm.sh/helm/v3/pkg/chartutil"
	_ "helm.sh/helm/v3/pkg/engine"
	_ "helm.sh/helm/v3/pkg/lint"
	_ "helm.sh/helm/v3/pkg/releaseutil"
	_ "k8s.io/api/apps/v1"
	_ "k8s.io/apimachinery/pkg/util/validation"
	_ "sigs.k8s.io/yaml"
)
