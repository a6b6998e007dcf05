{{/* Generated from t9k_sdk/install.py by `t9k-sdk install --helm-chart`; do not edit. */}}

{{/*
The values are checked by values.schema.json; these checks repeat the ones that keep a value
from breaking the YAML, for `--skip-schema-validation`.
*/}}
{{- define "t9k-operator.namespace" -}}
{{- $ns := .Values.namespace | toString -}}
{{- if not (regexMatch "^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$" $ns) -}}
{{- fail (printf "namespace %q is not a valid namespace name: it must be a DNS-1123 label, at most 63 characters of lowercase letters, digits and '-', starting and ending with a letter or digit (e.g. t9k-system)" $ns) -}}
{{- end -}}
{{- $ns -}}
{{- end -}}

{{- define "t9k-operator.watchNamespace" -}}
{{- $ns := .Values.watchNamespace | toString -}}
{{- if not (regexMatch "^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$" $ns) -}}
{{- fail (printf "watchNamespace %q is not a valid namespace name: it must be a DNS-1123 label, at most 63 characters of lowercase letters, digits and '-', starting and ending with a letter or digit (e.g. team-a), or empty for all namespaces" $ns) -}}
{{- end -}}
{{- $ns -}}
{{- end -}}

{{- define "t9k-operator.image" -}}
{{- $repo := .Values.image.repository | toString -}}
{{- $tag := default .Chart.AppVersion .Values.image.tag | toString -}}
{{- $digest := .Values.image.digest | default "" | toString -}}
{{- if not (regexMatch "^(?:[a-zA-Z0-9](?:[a-zA-Z0-9.-]*[a-zA-Z0-9])?(?::[0-9]+)?/)?[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*$" $repo) -}}
{{- fail (printf "image.repository %q is not an image name (e.g. registry.example.com/t9k-operator)" $repo) -}}
{{- end -}}
{{- if $digest -}}
{{- if not (regexMatch "^sha256:[a-f0-9]{64}$" $digest) -}}
{{- fail (printf "image.digest %q is not sha256:<64 hex digits>" $digest) -}}
{{- end -}}
{{- printf "%s@%s" $repo $digest -}}
{{- else -}}
{{- if not (regexMatch "^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$" $tag) -}}
{{- fail (printf "image.tag %q is not an image tag (letters, digits, '_', '.', '-'; at most 128)" $tag) -}}
{{- end -}}
{{- printf "%s:%s" $repo $tag -}}
{{- end -}}
{{- end -}}
