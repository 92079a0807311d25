{{- define "ontap-operator.labels" -}}
app.kubernetes.io/name: ontap-operator
{{- end }}
{{/* The operator's namespace: the value, or the release's (Gardener installs into extension-<name>). */}}
{{- define "ontap-operator.namespace" -}}
{{ .Values.namespace | default .Release.Namespace }}
{{- end }}
