{{- define "ontap-operator.labels" -}}
app.kubernetes.io/name: ontap-operator
{{- end }}
{{/* The operator's namespace: the value, or the release's (Gardener installs into extension-<name>). */}}
{{- define "ontap-operator.namespace" -}}
{{ .Values.namespace | default .Release.Namespace }}
{{- end }}
{{/* The image vector overwrite: its ConfigMap, the file it becomes and where it is mounted (Gardener's own names and path). */}}
{{- define "ontap-operator.imagevector-overwrite" -}}
ontap-operator-imagevector-overwrite
{{- end }}
{{- define "ontap-operator.imagevector-overwrite-file" -}}
images_overwrite.yaml
{{- end }}
{{- define "ontap-operator.imagevector-overwrite-dir" -}}
/charts_overwrite
{{- end }}
{{/* The features this installation runs, as a JSON list for fromJsonArray: files/features.yaml
(written by `make manifests` from src/features.rs) without those whose `<switch>.enabled` is
unset, so a feature added there needs no edit here. */}}
{{- define "ontap-operator.features" -}}
{{- $running := list }}
{{- range (.Files.Get "files/features.yaml" | fromYaml).features }}
{{- if or (not .switch) (dig .switch "enabled" false $.Values.AsMap) }}
{{- $running = append $running . }}
{{- end }}
{{- end }}
{{- toJson $running }}
{{- end }}
