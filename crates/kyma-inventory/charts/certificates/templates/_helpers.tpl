{{- define "component.name" -}}
{{- .Values.component | default .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "component.labels" -}}
app.kubernetes.io/name: {{ include "component.name" . }}
app.kubernetes.io/part-of: kyma
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}
