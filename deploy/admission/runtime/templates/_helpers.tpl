{{- define "admission.name" -}}gardener-extension-ontap-admission{{- end -}}

{{- define "admission.labels" -}}
app.kubernetes.io/name: {{ include "admission.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}
